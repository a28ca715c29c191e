"""One module per benchmark: loader, validation, request builder and scorer glue."""
