"""The built-in metrics: a subset of OSWorld's, same names, signatures and results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from computer_env.osworld.metrics.chrome import (
    is_expected_active_tab,
    is_expected_tabs,
    is_expected_url_pattern_match,
)
from computer_env.osworld.metrics.docs import compare_docx_files, compare_text_file
from computer_env.osworld.metrics.general import (
    check_csv,
    check_include_exclude,
    check_list,
    diff_text_file,
    exact_match,
    infeasible,
    is_in_list,
    literal_match,
    match_in_list,
)
from computer_env.osworld.metrics.table import compare_csv, compare_table

Metric = Callable[..., float]

METRICS: dict[str, Metric] = {
    fn.__name__: fn for fn in (
        check_csv, check_include_exclude, check_list, compare_csv, compare_docx_files,
        compare_table, compare_text_file, diff_text_file, exact_match, infeasible,
        is_expected_active_tab, is_expected_tabs, is_expected_url_pattern_match, is_in_list,
        literal_match, match_in_list,
    )
}
"""Metric name -> function."""

__all__ = ["METRICS", "Metric", *sorted(METRICS)]
