"""One table of options: `mcinfer run`'s flags, ``mcinfer.run()``'s keywords and
``mcinfer.Model()``'s parameters are built from it, and each value is parsed and refused alike on
every surface (the refusal names the option as that surface spells it)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcinfer
import pytest
from mcinfer import _core

TABLE: list[dict[str, Any]] = _core.option_table()
REQUIRED_CLI = ["model-dir-x", "--input", "in.csv", "--output", "out.csv"]
REQUIRED_PY = {"model_dir": "model-dir-x", "input": "in.csv", "output": "out.csv"}


def _option_id(option: dict[str, Any]) -> str:
    return str(option["name"])


def _cli_args(option: dict[str, Any], text: str | None) -> list[str]:
    """The flag as the command line gives it: a switch or toggle alone, else flag and value."""
    if option["name"] in REQUIRED_PY:
        args = [a if a != REQUIRED_PY[option["name"]] else str(text) for a in REQUIRED_CLI]
        return args
    if option["kind"] == "switch":
        return REQUIRED_CLI + [option["cli"]]
    if option["kind"] == "toggle":
        return REQUIRED_CLI + [option["cli"] if text == "true" else "--no-" + option["cli"][2:]]
    return REQUIRED_CLI + [option["cli"], str(text)]


def _valid(option: dict[str, Any]) -> tuple[Any, str]:
    """A value other than the default, as Python gives it and as the table renders it."""
    kind = option["kind"]
    if kind == "choice":
        choice = next(c for c in reversed(option["choices"]) if c != option["default"])
        return choice, choice
    if kind in ("count", "positive", "replicas"):
        return 7, "7"
    if kind == "number":
        return 0.75, "0.75"
    if kind == "switch":
        flip = option["default"] != "true"
        return flip, "true" if flip else "false"
    if kind == "toggle":
        return False, "false"
    return "some/value.x", "some/value.x"  # text, path


# A value the table refuses, as Python and as the command line give it.
INVALID: dict[str, tuple[Any, str]] = {
    "choice": ("nope", "nope"),
    "count": (-1, "-1"),
    "positive": (0, "0"),
    "replicas": (0, "0"),
    "number": (1.5, "1.5"),
    "path": ("", ""),
}


def test_the_table_lists_every_surface_option() -> None:
    names = [o["name"] for o in TABLE]
    assert len(names) == len(set(names))
    for option in TABLE:
        assert option["help"], option["name"]
        assert option["run"] or option["model"], option["name"]
        if option["kind"] == "choice":
            assert len(option["choices"]) >= 2, option["name"]


@pytest.mark.parametrize("option", TABLE, ids=_option_id)
def test_a_value_reaches_every_surface_alike(option: dict[str, Any]) -> None:
    python_value, text = _valid(option)
    name = option["name"]
    cli = _core.parsed_cli_run_options(_cli_args(option, text)) if option["run"] else None
    if option["run"]:
        run = _core.parsed_run_options({**REQUIRED_PY, name: python_value})
        assert run[name] == text
        assert run != _core.parsed_run_options(REQUIRED_PY) or name in REQUIRED_PY
        assert cli == run
    if option["model"]:
        model = _core.parsed_model_options({name: python_value})
        assert model[name] == text
        assert cli is None or cli[name] == model[name]


@pytest.mark.parametrize("option", [o for o in TABLE if o["kind"] in INVALID], ids=_option_id)
def test_a_wrong_value_is_refused_alike(option: dict[str, Any]) -> None:
    python_value, text = INVALID[option["kind"]]
    name, flag = option["name"], option["cli"]
    messages = []
    if option["run"]:
        with pytest.raises(mcinfer.UsageError) as on_cli:
            _core.parsed_cli_run_options(_cli_args(option, text))
        with pytest.raises(mcinfer.UsageError) as on_run:
            _core.parsed_run_options({**REQUIRED_PY, name: python_value})
        cli_message, run_message = str(on_cli.value), str(on_run.value)
        assert cli_message.startswith(f"{flag} must be "), cli_message
        assert run_message == name + cli_message[len(flag) :]
        messages.append(run_message)
    if option["model"]:
        with pytest.raises(mcinfer.UsageError) as on_model:
            _core.parsed_model_options({name: python_value})
        messages.append(str(on_model.value))
    assert messages and all(m == messages[0] for m in messages), messages
    assert messages[0].endswith(f", not '{text}'")


@pytest.mark.parametrize("option", TABLE, ids=_option_id)
def test_a_value_of_the_wrong_type_is_a_type_error(option: dict[str, Any]) -> None:
    wrong: Any = 1.5 if option["kind"] in ("switch", "toggle", "text", "choice", "path") else "x"
    if option["kind"] == "number":
        wrong = "0.5"
    if option["kind"] == "replicas":
        wrong = 1.5
    surfaces = []
    if option["run"]:
        surfaces.append(lambda: _core.parsed_run_options({**REQUIRED_PY, option["name"]: wrong}))
    if option["model"]:
        surfaces.append(lambda: _core.parsed_model_options({option["name"]: wrong}))
    for call in surfaces:
        with pytest.raises(TypeError, match=f"^{option['name']} must be "):
            call()


def test_unknown_options_are_refused_by_name() -> None:
    with pytest.raises(TypeError, match="unknown option 'text_column'"):
        _core.parsed_run_options({**REQUIRED_PY, "text_column": "x"})
    # An option of run that a Model does not have.
    with pytest.raises(TypeError, match="unknown option 'schedule'"):
        _core.parsed_model_options({"schedule": "static"})


def test_model_parameters_are_the_tables_with_its_defaults() -> None:
    parameters = inspect.signature(mcinfer.Model.__init__).parameters
    table = {o["name"]: o for o in TABLE if o["model"]}
    assert set(parameters) - {"self", "model_dir"} == set(table)
    for name, option in table.items():
        default = parameters[name].default
        if default is None:
            continue  # unset: the table's default, or the model directory's
        rendered = ("true" if default else "false") if isinstance(default, bool) else str(default)
        assert rendered == option["default"], name
    run_default = inspect.signature(mcinfer.run).parameters["precision"].default
    assert run_default == next(o for o in TABLE if o["name"] == "precision")["default"]


@pytest.mark.parametrize(
    "option", [o for o in TABLE if o["run"] and o["kind"] in INVALID], ids=_option_id
)
def test_the_command_refuses_as_the_table_does(option: dict[str, Any], tmp_path: Path) -> None:
    # The installed console script: exit status 2 and the table's words, before any file is read.
    script = Path(sys.executable).parent / "mcinfer"
    _, text = INVALID[option["kind"]]
    with pytest.raises(mcinfer.UsageError) as parsed:
        _core.parsed_cli_run_options(_cli_args(option, text))
    done = subprocess.run(
        [str(script), "run", *_cli_args(option, text)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"mcinfer: error: {parsed.value}"
