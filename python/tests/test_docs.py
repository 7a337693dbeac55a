"""Every public item of the package has a docstring (as every public Rust
item has a doc comment)."""

from __future__ import annotations

import inspect

import mnemon
import mnemon.langgraph


def public_members(cls: type):
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (property, staticmethod, classmethod)) or inspect.isfunction(value):
            yield name, value


def test_every_public_item_has_a_docstring():
    missing = []
    modules = [(mnemon, mnemon.__all__), (mnemon.langgraph, mnemon.langgraph.__all__)]
    for module, names in modules:
        assert module.__doc__ and len(module.__doc__.split()) > 20, module.__name__
        for name in names:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                if not (obj.__doc__ or "").strip():
                    missing.append(f"{module.__name__}.{name}")
            if inspect.isclass(obj):
                for member, value in public_members(obj):
                    target = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
                    if not (getattr(target, "__doc__", None) or "").strip():
                        missing.append(f"{module.__name__}.{name}.{member}")
    assert not missing, missing


def test_result_type_docs_come_from_the_rust_docs():
    assert "version" in (mnemon.Memory.__doc__ or "")
    assert mnemon.Memory.importance.__doc__ and "0.0" in mnemon.Memory.importance.__doc__
    assert "[`" not in (mnemon.CheckReport.digest.__doc__ or "")
