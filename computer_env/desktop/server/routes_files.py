"""Placeholder: routes for files are added in the next commit."""

from flask import Blueprint

bp = Blueprint("files", __name__)
