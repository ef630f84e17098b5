"""cuzk-format logs and nsys SQLite exports → pandas: :func:`parse_file`/:func:`parse_lines` → :class:`ParsedLog`,
:func:`partition_table`, :func:`to_events` (the event table), :func:`read_nsys_sqlite`, :func:`demo_nsys_sqlite`."""

from zkgpu.analysis.logs.group import PARTITION_COLUMNS, partition_table
from zkgpu.analysis.logs.lines import MARKERS
from zkgpu.analysis.logs.nsys import demo_nsys_sqlite, read_nsys_sqlite
from zkgpu.analysis.logs.parse import PROGRESS_MIN_BYTES, parse_file, parse_lines
from zkgpu.analysis.logs.parsed import ParsedLog
from zkgpu.analysis.logs.placement import to_events

__all__ = [
    "ParsedLog",
    "parse_lines",
    "parse_file",
    "partition_table",
    "to_events",
    "read_nsys_sqlite",
    "demo_nsys_sqlite",
    "PARTITION_COLUMNS",
    "MARKERS",
    "PROGRESS_MIN_BYTES",
]
