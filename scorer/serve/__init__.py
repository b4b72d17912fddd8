"""`scorer serve`: a competition server's store, tokens and (later) its web app and workers."""
