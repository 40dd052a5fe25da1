"""Cut the operations ghsim serves out of GitHub's published OpenAPI description.

    python -m ghsim.openapi.extract PATH/api.github.com.json [--out ghsim/openapi/subset.json]

``PATH/api.github.com.json`` is ``generated/api.github.com.json`` of the npm package
``@octokit/openapi`` (MIT, see ``LICENSE`` and ``README.md`` beside this file). For every
route in :data:`ghsim.routes.ROUTES` the output keeps the operation's ``operationId`` and,
per status code, the ``application/json`` response schema (``null`` for a status without a
body, such as 304). ``$ref``s to ``#/components/schemas/X`` become ``#/$defs/X`` and only
the schemas they reach are kept. OpenAPI 3.0's ``nullable`` is rewritten into JSON Schema
(a ``"null"`` type or an ``anyOf`` branch), and annotations (descriptions, examples,
titles, ``x-`` extensions) are dropped, so the file is a self-contained JSON Schema 2020-12
document set that :mod:`jsonschema` reads as is. Routes the description does not have (only
``POST /graphql``: GraphQL has no OpenAPI description) are listed under ``not_in_openapi``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from ghsim.routes import ROUTES

SUBSET_PATH = Path(__file__).with_name("subset.json")
SCHEMA_REF = "#/components/schemas/"
RESPONSE_REF = "#/components/responses/"
ANNOTATIONS = frozenset(
    {"description", "example", "examples", "title", "readOnly", "writeOnly", "deprecated"}
    | {"externalDocs", "default", "discriminator"}
)


def convert(schema: Any, refs: set[str]) -> Any:
    """``schema`` as JSON Schema 2020-12; adds the component names it refers to to ``refs``."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ANNOTATIONS or key.startswith("x-") or key == "nullable":
            continue
        if key == "$ref":
            name = value.removeprefix(SCHEMA_REF)
            refs.add(name)
            out[key] = f"#/$defs/{name}"
        elif key == "properties":
            out[key] = {prop: convert(sub, refs) for prop, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = convert(value, refs)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [convert(sub, refs) for sub in value]
        else:
            out[key] = value
    if schema.get("nullable") is True:
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _responses(spec: dict[str, Any], operation: dict[str, Any], refs: set[str]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for status, response in operation["responses"].items():
        if "$ref" in response:
            response = spec["components"]["responses"][response["$ref"].removeprefix(RESPONSE_REF)]
        media = response.get("content", {}).get("application/json")
        kept[status] = {"schema": None if media is None else convert(media["schema"], refs)}
    return kept


def _close_over(spec: dict[str, Any], refs: set[str]) -> dict[str, Any]:
    """The converted component schemas named in ``refs`` and every one they reach."""
    defs: dict[str, Any] = {}
    pending = sorted(refs)
    while pending:
        name = pending.pop()
        if name in defs:
            continue
        found: set[str] = set()
        defs[name] = convert(spec["components"]["schemas"][name], found)
        pending.extend(sorted(found - defs.keys()))
    return dict(sorted(defs.items()))


def extract(spec: dict[str, Any], source_sha256: str) -> dict[str, Any]:
    """The subset document for every route ghsim serves."""
    refs: set[str] = set()
    paths: dict[str, dict[str, Any]] = {}
    missing: list[dict[str, str]] = []
    for entry in ROUTES:
        operation = spec["paths"].get(entry.template, {}).get(entry.method.lower())
        if operation is None:
            missing.append({"method": entry.method, "template": entry.template})
            continue
        paths.setdefault(entry.template, {})[entry.method.lower()] = {
            "operationId": operation["operationId"],
            "responses": _responses(spec, operation, refs),
        }
    info = spec["info"]
    return {
        "source": {
            "title": info["title"],
            "version": info["version"],
            "plan": info.get("x-github-plan"),
            "openapi": spec["openapi"],
            "sha256": source_sha256,
        },
        "not_in_openapi": missing,
        "paths": dict(sorted(paths.items())),
        "$defs": _close_over(spec, refs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("description", type=Path, help="generated/api.github.com.json")
    parser.add_argument("--out", type=Path, default=SUBSET_PATH)
    args = parser.parse_args(argv)
    raw = args.description.read_bytes()
    subset = extract(json.loads(raw), hashlib.sha256(raw).hexdigest())
    args.out.write_text(json.dumps(subset, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    operations = sum(len(ops) for ops in subset["paths"].values())
    print(
        f"{args.out}: {operations} operations, {len(subset['$defs'])} schemas, "
        f"not in the description: {subset['not_in_openapi']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
