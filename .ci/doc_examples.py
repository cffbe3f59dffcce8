#!/usr/bin/env python3
"""Every public item of the crate has a runnable code example in its docs.

rustdoc's own lint (`rustdoc::missing_doc_code_examples`, nightly) checks
only items *defined* in a public module: it skips every item that a private
module defines and the crate root re-exports (`Timer`, `Builder`, `Sleep`,
... all live in private modules here), so on its own it would pass with most
of the public surface bare. This script reads rustdoc's JSON output (nightly
`--output-format json`) instead, walks what a user can reach from the crate
root (modules, re-exports, inherent methods, trait methods) and applies the
lint's rule to each item: structs, enums, unions, traits, functions, methods
and macros need an example; fields, variants, consts, statics, type aliases,
associated items of trait impls, and `#[doc(hidden)]` items do not. An
example is a fenced code block that rustdoc tests as Rust and does not
`ignore` (plain, `no_run`, `should_panic`, `compile_fail`, ...).

Usage: doc_examples.py target/doc/tickwheel.json
Prints each item without an example and exits 1 if there is one.
"""

import json
import re
import sys

# Fence attributes rustdoc knows for Rust code blocks (LangString::parse);
# a block whose info string has any other word (text, toml, sh, ...) is not
# a Rust test.
RUST_ATTRS = {
    "rust",
    "should_panic",
    "no_run",
    "compile_fail",
    "test_harness",
    "standalone_crate",
    "allow_fail",
}


def has_example(docs):
    fence = None
    for line in (docs or "").splitlines():
        stripped = line.strip()
        if fence is None:
            m = re.match(r"^(`{3,}|~{3,})(.*)$", stripped)
            if not m:
                continue
            fence = m.group(1)
            words = [w for w in re.split(r"[\s,{}]+", m.group(2)) if w]
            words = [w for w in words if not w.startswith(".")]
            if "ignore" in words or any(w.startswith("ignore-") for w in words):
                continue
            rust = all(
                w in RUST_ATTRS
                or re.fullmatch(r"edition\d+", w)
                or re.fullmatch(r"E\d{4}", w)
                for w in words
            )
            if rust:
                return True
        elif stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
            fence = None
    return False


def main(path):
    doc = json.load(open(path))
    index = doc["index"]
    seen = set()
    missing = []

    def get(item_id):
        return index.get(str(item_id))

    def kind(item):
        return next(iter(item["inner"]))

    def hidden(item):
        return any("hidden" in str(a) for a in item.get("attrs", []))

    def check(item, owner=None):
        name = item["name"] if owner is None else f"{owner}::{item['name']}"
        if not has_example(item.get("docs")):
            span = item.get("span") or {}
            where = f"{span.get('filename', '?')}:{(span.get('begin') or ['?'])[0]}"
            missing.append((where, kind(item), name))

    def visit(item_id):
        if item_id is None or str(item_id) in seen:
            return
        seen.add(str(item_id))
        item = get(item_id)
        if item is None or item.get("crate_id") != 0 or hidden(item):
            return
        k = kind(item)
        inner = item["inner"][k]
        if k == "module":
            for child in inner["items"]:
                visit(child)
        elif k == "use":
            target = get(inner["id"]) if inner["id"] is not None else None
            if target is not None and inner["is_glob"] and kind(target) == "module":
                for child in target["inner"]["module"]["items"]:
                    visit(child)
            else:
                visit(inner["id"])
        elif k in ("struct", "enum", "union"):
            check(item)
            for impl_id in inner["impls"]:
                impl = get(impl_id)
                if impl is None or hidden(impl):
                    continue
                imp = impl["inner"]["impl"]
                if imp["trait"] is not None or imp.get("is_synthetic") or imp.get("blanket_impl"):
                    continue
                for m in imp["items"]:
                    method = get(m)
                    if (
                        method is not None
                        and method["visibility"] == "public"
                        and kind(method) == "function"
                        and not hidden(method)
                    ):
                        check(method, item["name"])
        elif k == "trait":
            check(item)
            for m in inner["items"]:
                method = get(m)
                if method is not None and kind(method) == "function" and not hidden(method):
                    check(method, item["name"])
        elif k in ("function", "macro"):
            check(item)

    visit(doc["root"])
    for where, k, name in sorted(missing):
        print(f"missing code example: {k} {name} ({where})")
    print(f"{len(missing)} public item(s) without a code example", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
