"""GitHub's OpenAPI description, cut to the operations ghsim serves (see ``README.md``).

``subset.json`` is made by :mod:`ghsim.openapi.extract` and read by
``tests/e2e/test_ghsim_openapi.py``; nothing in ghsim reads it at run time.
"""
