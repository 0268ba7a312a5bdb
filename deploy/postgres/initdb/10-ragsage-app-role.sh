#!/bin/sh
# Creates ragsage's scoped login role, with a password, when the postgres container
# initialises an empty data volume (the official image runs /docker-entrypoint-initdb.d/*
# once, on first start only).
#
# `ragsage migrate` creates this role itself when it is missing, but without a password,
# and the image's server asks every TCP client for one; creating it here first lets the
# API and the workers log in as ragsage_app.  The attributes match what the migration
# would create: it can log in and nothing more (no superuser, no RLS bypass).
#
# On a volume created before this script was mounted, or to change the password later:
#   docker compose exec postgres psql -U ragsage -d ragsage \
#     -c "ALTER ROLE ragsage_app PASSWORD 'new-password'"
set -e

if [ -z "${POSTGRES_APP_PASSWORD:-}" ]; then
    echo "POSTGRES_APP_PASSWORD is not set: the ragsage_app role needs a password" >&2
    exit 1
fi

psql --no-psqlrc -v ON_ERROR_STOP=1 \
    --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
    --set=app_password="$POSTGRES_APP_PASSWORD" <<'SQL'
SELECT NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ragsage_app') AS missing \gset
\if :missing
CREATE ROLE ragsage_app LOGIN PASSWORD :'app_password'
    NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
\else
ALTER ROLE ragsage_app PASSWORD :'app_password';
\endif
SQL
