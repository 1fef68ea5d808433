#!/bin/sh
# help2man runs this as if it were "gpusqueeze $GSQ_SUBCOMMAND": --help is the subcommand's own help.
exec "$GSQ_BINARY" "$GSQ_SUBCOMMAND" "$@"
