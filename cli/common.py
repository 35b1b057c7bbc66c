"""Compatibility shell: the helpers the front ends share now live in modules by concern, and this
module only re-exports them for code not yet moved to those modules.

- ``softrank.cli.args``: argument parsers (tolerances, integer lists, counts, paths, devices);
- ``softrank.cli.paths``: output folders and files, outputs that would change an input;
- ``softrank.cli.progress``: the progress bar;
- ``softrank.cli.summaries``: medians, ``n/a`` numbers, standard JSON;
- ``softrank.fastpath.runner``: the journal and every worker (in process or on Dask).
"""

from __future__ import annotations

from softrank.cli.args import (MAX_LIST, check_count, check_device, max_jobs, parse_count,  # noqa: F401
                               parse_eps_exact, parse_int_list, parse_tolerances, path_arg, value_arg)
from softrank.cli.paths import (MAX_INPUT_BYTES, check_not_input, check_outside, load_json_text,  # noqa: F401
                                output_dir, output_file, read_text_file, replay_tables, store_records)
from softrank.cli.progress import progress  # noqa: F401
from softrank.cli.summaries import finite, json_text, max_or_none, median_or_none, shown_number  # noqa: F401
