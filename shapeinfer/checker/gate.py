"""What a CI gate around check needs: folders of models, codes to ignore, and a baseline of
accepted findings (as linters keep one: the findings a team has looked at and accepted do not
fail the build; a new one does).

A baseline file is JSON: ``{"shapeinfer_baseline": 1, "findings": [{"model", "code", "node",
"op", "message"}]}``. A finding is accepted where the baseline lists one of the same model,
code, node and op (each listed entry accepts one finding: two new ones at a node listed once
leave one reported). The message is kept for the reader, not matched: a reworded message in a
later release does not fail the build.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections import Counter

BASELINE_VERSION = 1
MAX_BASELINE_BYTES = 64 * 2 ** 20
_CODE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class BaselineError(ValueError):
    """A baseline file, a code or a folder that cannot be used (a usage error)."""


def expand_models(paths, recursive: bool = False) -> list:
    """The models of ``paths``: a folder stands for its ``*.onnx`` files (in its subfolders too
    with ``recursive``), sorted; any other path as it is. A folder holding none is an error."""
    out: list = []
    for p in paths:
        if os.path.isdir(p):
            pattern = os.path.join(glob.escape(p), "**", "*.onnx") if recursive else os.path.join(glob.escape(p), "*.onnx")
            found = sorted(f for f in glob.glob(pattern, recursive=recursive) if os.path.isfile(f))
            if not found:
                raise BaselineError(f"folder {p!r} holds no *.onnx file{' (in any subfolder)' if recursive else ''}"
                                    f"{'' if recursive else '; -r searches its subfolders'}")
            out.extend(found)
        else:
            out.append(p)
    return out


def ignored_codes(items) -> frozenset:
    """--ignore items (CODE or CODE,CODE) as a set of codes."""
    codes = set()
    for item in items:
        for code in item.split(","):
            code = code.strip()
            if not _CODE.match(code):
                raise BaselineError(f"--ignore {item!r}: {code!r} is not a finding code (such as input-bound, "
                                    "declared-shape)")
            codes.add(code)
    return frozenset(codes)


def _key(model: str, code: str, node: str, op: str) -> tuple:
    return (os.path.normpath(model).replace(os.sep, "/"), code, node, op)


class Baseline:
    """Accepted findings, each taken once."""

    def __init__(self, entries: list):
        self.entries = entries
        self._left = Counter(_key(e["model"], e["code"], e["node"], e["op"]) for e in entries)

    def __len__(self) -> int:
        return len(self.entries)

    def takes(self, model: str, finding) -> bool:
        """Whether the baseline accepts ``finding`` of ``model`` (and uses up the entry that does)."""
        key = _key(model, finding.code, finding.node, finding.op)
        if self._left[key] > 0:
            self._left[key] -= 1
            return True
        return False

    @classmethod
    def of(cls, reports) -> "Baseline":
        return cls([{"model": r.path, "code": f.code, "node": f.node, "op": f.op, "message": f.message}
                    for r in reports for f in r.findings])

    def dumps(self) -> str:
        return json.dumps({"shapeinfer_baseline": BASELINE_VERSION, "findings": self.entries}, indent=1) + "\n"

    @classmethod
    def read(cls, path: str) -> "Baseline":
        try:
            if os.path.getsize(path) > MAX_BASELINE_BYTES:
                raise BaselineError(f"baseline {path!r} is larger than {MAX_BASELINE_BYTES} bytes")
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            raise BaselineError(f"baseline {path!r} does not exist (write it with --update-baseline)") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise BaselineError(f"baseline {path!r} cannot be read: {e}") from None
        if not isinstance(data, dict) or data.get("shapeinfer_baseline") != BASELINE_VERSION \
                or not isinstance(data.get("findings"), list):
            raise BaselineError(f"baseline {path!r} is not a shapeinfer baseline (version {BASELINE_VERSION}): "
                                "write it with --update-baseline")
        entries = []
        for e in data["findings"]:
            if not isinstance(e, dict) or not all(isinstance(e.get(k), str) for k in ("model", "code", "node", "op")):
                raise BaselineError(f"baseline {path!r}: an entry without model, code, node and op: {str(e)[:100]}")
            entries.append(e)
        return cls(entries)
