"""``RELAY_FUZZ_DB`` (a directory or ``redis://...``) becomes the default example database
for the fuzz targets, so HypoFuzz fuzzes them and pytest replays what it found."""

from fuzz_targets import use_shared_database

use_shared_database()
