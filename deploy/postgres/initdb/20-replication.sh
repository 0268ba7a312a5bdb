#!/bin/sh
# Lets a streaming replica (compose's `replica` profile, the postgres-replica service)
# copy this server and follow its WAL: the official image's pg_hba.conf admits every
# database over the network but not replication connections.  The replica logs in as
# the owner (POSTGRES_USER, who may replicate) with its password.  Runs once, when the
# data volume is first initialised; on an older volume, append the same line by hand
# and reload (SELECT pg_reload_conf()).
set -e
echo "host replication ${POSTGRES_USER:-postgres} all scram-sha-256" >> "$PGDATA/pg_hba.conf"
