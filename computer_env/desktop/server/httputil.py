"""Request parsing and error answers shared by every route module."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from flask import Response, jsonify, request


class RequestError(Exception):
    """An answer other than 200, raised from a route: ``{"status": "error", "message": ...}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str) -> tuple[Response, int]:
    """The JSON error shape every endpoint uses."""
    return jsonify({"status": "error", "message": message}), status


def bad_request(message: str) -> RequestError:
    return RequestError(400, message)


def body() -> dict[str, Any]:
    """The request's fields: a JSON object, or form fields for form-encoded requests."""
    if request.is_json or (request.data and not request.form):
        if not request.data:
            return {}
        data = request.get_json(silent=True)
        if data is None:
            raise bad_request("request body is not valid JSON")
        if not isinstance(data, dict):
            raise bad_request("request body must be a JSON object")
        return data
    return dict(request.form.items())


def field_str(data: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    """A non-empty string field, or None when optional and absent."""
    value = data.get(name)
    if value is None or value == "":
        if required:
            raise bad_request(f"field '{name}' is required")
        return None
    if not isinstance(value, str):
        raise bad_request(f"field '{name}' must be a string")
    return value


def field_bool(data: Mapping[str, Any], name: str, default: bool = False) -> bool:
    value = data.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "false", "1", "0"}:
        return value.lower() in {"true", "1"}
    raise bad_request(f"field '{name}' must be a boolean")


def field_number(
    data: Mapping[str, Any], name: str, default: float, *, low: float, high: float
) -> float:
    value = data.get(name, default)
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise bad_request(f"field '{name}' must be a number") from None
    if isinstance(value, bool) or not low <= number <= high:
        raise bad_request(f"field '{name}' must be a number between {low:g} and {high:g}")
    return number


def field_command(data: Mapping[str, Any]) -> tuple[str | list[str], bool]:
    """OSWorld's ``{command, shell}``: a string is split with shlex unless ``shell`` is true."""
    import shlex

    shell = field_bool(data, "shell")
    command = data.get("command")
    if command is None or command == "" or command == []:
        raise bad_request("field 'command' is required")
    if isinstance(command, str):
        if shell:
            return command, True
        try:
            command = shlex.split(command)
        except ValueError as exc:
            raise bad_request(f"field 'command' cannot be split: {exc}") from None
    elif isinstance(command, list) and all(isinstance(arg, str) for arg in command):
        if shell:  # like subprocess: the first item is the script, the rest its $0, $1...
            return command, True
    else:
        raise bad_request("field 'command' must be a string or a list of strings")
    return [os.path.expanduser(arg) if arg.startswith("~/") else arg for arg in command], False


def expand_path(path: str) -> str:
    """``~`` and ``$VARS`` expanded, as OSWorld's server does for file paths."""
    return os.path.expandvars(os.path.expanduser(path))
