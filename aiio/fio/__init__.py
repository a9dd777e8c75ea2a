"""fio beside aiio: the hero suite (also against an s3:// bucket, bucket.py), the job closest to
a phase, and each run set against fio."""
