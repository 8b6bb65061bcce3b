"""Placeholder: routes for a11y are added in the next commit."""

from flask import Blueprint

bp = Blueprint("a11y", __name__)
