#!/usr/bin/env bash
# Regenerates recording.jsonl from source-scenario.json: 80 readings, 0.2 s apart (16 s), with
# new pids in source-scenario.json and expect (../make-recording.lib.sh).
. "$(dirname "$0")/../make-recording.lib.sh"
record_case 80
