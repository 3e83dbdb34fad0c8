"""The shapeinfer command line (installed as the shapeinfer_cli package)."""
