"""Model files: reading them (load), their external data (external), writing them atomically
beside their relocated weights (writer), and the wire encoding of appended value_info (wire)."""
