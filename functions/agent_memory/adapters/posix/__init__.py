"""Adapters over a POSIX file system, shared by both runtimes: the local data directory and the S3 Files
(NFSv4.1) mount at /mnt/memory in AWS."""
