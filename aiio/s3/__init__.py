"""Object storage: an S3 bucket prefix as the target, reached through boto3."""
