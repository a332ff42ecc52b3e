"""Validates a JSON document against a JSON schema (Debian's python3-jsonschema).

  validate.py SCHEMA DOCUMENT    prints 'valid', or every error and exits 1
"""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
document = json.load(open(sys.argv[2]))
jsonschema.Draft202012Validator.check_schema(schema)
errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(document), key=lambda e: list(e.path))
for e in errors:
    print('invalid at /%s: %s' % ('/'.join(str(p) for p in e.path), e.message))
if errors:
    sys.exit(1)
print('valid')
