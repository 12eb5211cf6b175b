#!/usr/bin/env python3
"""Check fetchctl's JSON Schemas against the examples and the invalid-config corpus.

    python3 .ci/check_schemas.py REPO_ROOT

Checks, one line of output per failure and a one-line summary at the end:

- schemas/routes.schema.json and schemas/jobs.schema.json are valid draft 2020-12
  schemas, rendered with 2-space indentation and a trailing newline, give every
  property a description and close every object (additionalProperties: false);
- they are what schemas/generate.py produces (when the script exists);
- every examples/**/*.yaml (and .yml, but the deployment files .ci/examples-check.py checks) starts with a `# yaml-language-server: $schema=...`
  comment naming one of the two schemas, and validates against it;
- every Tests/Fixtures/invalid/*.yaml starts with that comment, has
  `# expect: <code>` on line 2 with a known diagnostic code, parses as YAML,
  and is rejected by the schema.

Exit status 0 when nothing failed, 1 otherwise. Needs jsonschema and PyYAML.
"""

import glob
import importlib.util
import json
import os
import re
import sys

import jsonschema
import yaml

SCHEMAS = ("routes.schema.json", "jobs.schema.json")
SCHEMA_COMMENT = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")
EXPECT_COMMENT = re.compile(r"^# expect: ([a-z][a-z0-9-]*)$")

# Diagnostic codes the loader reports for mistakes a schema can see.
KNOWN_CODES = {
    "yaml-syntax", "duplicate-key", "unknown-key", "type-mismatch", "invalid-value",
    "invalid-duration", "invalid-rate", "invalid-size", "invalid-status", "invalid-url",
    "invalid-checksum", "invalid-id", "missing-key", "unsupported-version", "conflicting-keys",
    "key-not-allowed", "invalid-jsonpath",
}

# Keywords whose subschemas constrain rather than declare keys: the lint skips them.
CONDITIONAL = {"if", "then", "else", "not", "allOf", "oneOf", "dependentSchemas"}


class Loader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as strings and refuses duplicate keys."""


Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, "duplicate key %r" % (key,), key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)


class Checker:
    def __init__(self, root):
        self.root = root
        self.passed = 0
        self.failed = 0
        self.validators = {}

    def ok(self):
        self.passed += 1

    def fail(self, what, why):
        self.failed += 1
        print("FAIL %s: %s" % (what, why))

    def rel(self, path):
        return os.path.relpath(path, self.root)

    # -- schemas ------------------------------------------------------------

    def check_schemas(self):
        generated = self.generated()
        for name in SCHEMAS:
            path = os.path.join(self.root, "schemas", name)
            what = self.rel(path)
            try:
                with open(path, encoding="utf-8", newline="") as f:
                    text = f.read()
                schema = json.loads(text)
                jsonschema.Draft202012Validator.check_schema(schema)
            except (OSError, ValueError, jsonschema.SchemaError) as e:
                self.fail(what, "not a valid schema: %s" % e)
                continue
            problems = []
            if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
                problems.append("$schema is not draft 2020-12")
            if schema.get("$id") != "https://fetchctl.dev/schemas/" + name:
                problems.append("$id is not https://fetchctl.dev/schemas/" + name)
            if text != json.dumps(schema, indent=2, ensure_ascii=True) + "\n":
                problems.append("not rendered with 2-space indentation and a trailing newline")
            if generated is not None and generated.get(name) != text:
                problems.append("differs from what schemas/generate.py produces")
            for ref in self.refs(schema):
                if not ref.startswith("#/$defs/") or ref[len("#/$defs/"):] not in schema.get("$defs", {}):
                    problems.append("unresolved or external $ref " + ref)
            problems.extend(self.lint(schema, "#"))
            if problems:
                for p in problems:
                    self.fail(what, p)
            else:
                self.ok()
            self.validators[name] = jsonschema.Draft202012Validator(
                schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)

    def generated(self):
        script = os.path.join(self.root, "schemas", "generate.py")
        if not os.path.exists(script):
            return None
        spec = importlib.util.spec_from_file_location("fetchctl_schema_generate", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.outputs()

    def refs(self, node):
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                yield node["$ref"]
            for value in node.values():
                yield from self.refs(value)
        elif isinstance(node, list):
            for value in node:
                yield from self.refs(value)

    def lint(self, node, where):
        """Every declared property has a description; every declaring object is closed."""
        if isinstance(node, list):
            for i, value in enumerate(node):
                yield from self.lint(value, "%s/%d" % (where, i))
            return
        if not isinstance(node, dict):
            return
        if "properties" in node:
            if node.get("additionalProperties") is not False:
                yield "%s declares properties without additionalProperties: false" % where
            for key, sub in node["properties"].items():
                if not isinstance(sub, dict) or not sub.get("description"):
                    yield "%s/properties/%s has no description" % (where, key)
        for key, value in node.items():
            if key in CONDITIONAL:
                continue
            if key == "properties":
                for name, sub in value.items():
                    yield from self.lint(sub, "%s/properties/%s" % (where, name))
            elif key in ("enum", "const", "default", "examples", "required", "dependentRequired"):
                continue
            elif isinstance(value, (dict, list)):
                yield from self.lint(value, "%s/%s" % (where, key))

    # -- YAML files -----------------------------------------------------------

    def load(self, path):
        """Return (lines, document) or raise with a message."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        return text.splitlines(), yaml.load(text, Loader=Loader)

    def schema_for(self, path, line, expected_prefix):
        m = SCHEMA_COMMENT.match(line or "")
        if not m:
            raise ValueError("line 1 is not '# yaml-language-server: $schema=%s...'" % expected_prefix)
        ref = m.group(1)
        if not ref.startswith(expected_prefix):
            raise ValueError("schema reference %s should start with %s" % (ref, expected_prefix))
        target = os.path.normpath(os.path.join(os.path.dirname(path), ref))
        name = os.path.basename(target)
        if name not in SCHEMAS or target != os.path.join(self.root, "schemas", name):
            raise ValueError("schema reference %s does not point at schemas/{routes,jobs}.schema.json" % ref)
        if name not in self.validators:
            raise ValueError("schema %s is unusable" % name)
        return self.validators[name]

    # Deployment files among the examples are not fetchctl configs (a Kubernetes manifest, a GitHub
    # workflow): .ci/examples-check.py checks them.
    NOT_CONFIGS = {os.path.join("examples", "kubernetes", "job.yml"), os.path.join("examples", "github-actions", "fetch.yml")}

    def check_examples(self):
        files = sorted(set(glob.glob(os.path.join(self.root, "examples", "**", "*.yaml"), recursive=True)
                           + glob.glob(os.path.join(self.root, "examples", "**", "*.yml"), recursive=True)))
        for path in files:
            if self.rel(path) in self.NOT_CONFIGS:
                continue
            what = self.rel(path)
            depth = what.count(os.sep)
            try:
                lines, doc = self.load(path)
                validator = self.schema_for(path, lines[0] if lines else "", "../" * depth + "schemas/")
            except (OSError, ValueError, yaml.YAMLError) as e:
                self.fail(what, str(e).replace("\n", " "))
                continue
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
            if errors:
                for e in errors:
                    self.fail(what, "%s: %s" % (json_path(e), e.message))
            else:
                self.ok()

    def check_corpus(self):
        directory = os.path.join(self.root, "Tests", "Fixtures", "invalid")
        files = sorted(glob.glob(os.path.join(directory, "*.yaml")))
        if not files:
            self.fail(self.rel(directory), "no invalid-config fixtures")
        for path in files:
            what = self.rel(path)
            if not re.match(r"^[0-9]{2}-[a-z0-9-]+\.yaml$", os.path.basename(path)):
                self.fail(what, "name is not NN-short-name.yaml")
                continue
            try:
                lines, doc = self.load(path)
                validator = self.schema_for(path, lines[0] if lines else "", "../../../schemas/")
            except (OSError, ValueError, yaml.YAMLError) as e:
                self.fail(what, str(e).replace("\n", " "))
                continue
            m = EXPECT_COMMENT.match(lines[1] if len(lines) > 1 else "")
            if not m:
                self.fail(what, "line 2 is not '# expect: <code>'")
                continue
            if m.group(1) not in KNOWN_CODES:
                self.fail(what, "unknown diagnostic code %s" % m.group(1))
                continue
            if validator.is_valid(doc):
                self.fail(what, "accepted by the schema, expected %s" % m.group(1))
            else:
                self.ok()


def json_path(error):
    return "/" + "/".join(str(p) for p in error.absolute_path)


def main(argv):
    if len(argv) != 2:
        print("usage: check_schemas.py REPO_ROOT", file=sys.stderr)
        return 64
    checker = Checker(os.path.abspath(argv[1]))
    checker.check_schemas()
    checker.check_examples()
    checker.check_corpus()
    print("%d passed, %d failed" % (checker.passed, checker.failed))
    return 1 if checker.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
