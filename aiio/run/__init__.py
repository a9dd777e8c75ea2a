"""One run: the runner, its client processes, their common start, hosts and MPI."""
