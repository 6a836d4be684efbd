#!/usr/bin/python3
"""What botocore's S3SigV4Auth signs for each case read as JSON from stdin (the case format of
tests/s3_sigv4_golden.py, whose sign() this reuses, with its test key pair); prints a JSON list of
the results. Run by js/test/unit/s3_sigv4.test.mjs with Debian's python3-botocore."""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests"))
import s3_sigv4_golden  # noqa: E402

json.dump([s3_sigv4_golden.sign(case) for case in json.load(sys.stdin)], sys.stdout)
