"""cuzk-format logs (upstream's and ours) and nsys SQLite exports → pandas.

The package's API, one concern per module:

* :mod:`zkgpu.analysis.logs.lines`: one record's text → a row (the formats: ``CUZK_TIMING:``,
  ``CUZK_NTT_H:``, ``TIMELINE,``, ``GPU_TIMING`` / ``FIN_TIMING``, pinned-pool and engine messages;
  prefixes, interleaved writers, cut records, units, bad values);
* :mod:`zkgpu.analysis.logs.parse`: a stream of lines → :class:`ParsedLog` (:func:`parse_lines`,
  :func:`parse_file`; linear time, bounded memory);
* :mod:`zkgpu.analysis.logs.group`: ``CUZK_TIMING`` lines → one row per partition (:func:`partition_table`);
* :mod:`zkgpu.analysis.logs.timeline`: pairing of TIMELINE start/end records;
* :mod:`zkgpu.analysis.logs.placement`: durations placed on a time axis → the event table (:func:`to_events`);
* :mod:`zkgpu.analysis.logs.nsys`: ``nsys export --type sqlite`` files → the event table
  (:func:`read_nsys_sqlite`), and a writer of that layout for the Nsight appendix
  (:func:`demo_nsys_sqlite`).

The ``zkgpu parse`` command is :mod:`zkgpu.app.parse_cmd`; ``zkgpu bench parse`` is
:mod:`zkgpu.app.bench.parse`.
"""

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
