"""Placeholder: routes for windows are added in the next commit."""

from flask import Blueprint

bp = Blueprint("windows", __name__)
