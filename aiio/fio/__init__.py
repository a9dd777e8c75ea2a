"""fio beside aiio: the hero suite, the job closest to a phase, and each run set against fio."""
