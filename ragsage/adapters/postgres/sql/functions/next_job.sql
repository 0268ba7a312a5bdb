-- requires: 21

-- The next job a free worker slot should run, across every namespace.
--
-- Only namespaces with queued work are visited (a skip scan of the waiting
-- index), and of each only its head: a recovered job or retry first, then its
-- interactive uploads, its bulk backlog, its re-index work, each oldest
-- first.  Among the heads: recovered work first; then namespaces under their
-- share of slots before those at it (a namespace at its share still runs when
-- nobody else waits, so a tenant alone uses every slot); then the fewest
-- running jobs; then the longest since the namespace's last turn; then the
-- head that waited longest.  A class orders a namespace's own work only: marking
-- every upload interactive gains a tenant nothing over another tenant.  A retry whose pause has not ended, and the jobs in `skip` (already
-- taken by another worker this turn), are passed over.
CREATE OR REPLACE FUNCTION ragsage_next_job(default_slots integer, skip uuid[])
    RETURNS TABLE (namespace text, job_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        WITH RECURSIVE waiting(namespace) AS (
            SELECT min(j.namespace) FROM ragsage_jobs j WHERE j.state = 'queued'
            UNION ALL
            SELECT (SELECT min(j.namespace) FROM ragsage_jobs j
                    WHERE j.state = 'queued' AND j.namespace > w.namespace)
            FROM waiting w WHERE w.namespace IS NOT NULL
        ),
        running AS (
            SELECT r.namespace, count(*) AS jobs FROM ragsage_jobs r
            WHERE r.state = 'running' AND r.lease_expires_at > now()
            GROUP BY r.namespace
        ),
        heads AS (
            SELECT w.namespace, h.id, h.recovered, h.created_at,
                   coalesce(r.jobs, 0) AS running,
                   coalesce(s.job_slots, default_slots) AS slots,
                   (SELECT max(t.claimed_at) FROM ragsage_jobs t
                    WHERE t.namespace = w.namespace AND t.claimed_at IS NOT NULL) AS last_turn
            FROM waiting w
            CROSS JOIN LATERAL (
                SELECT j.id, j.recovered, j.created_at
                FROM ragsage_jobs j
                WHERE j.namespace = w.namespace AND j.state = 'queued'
                  AND (j.run_after IS NULL OR j.run_after <= now())
                  AND j.id <> ALL (skip)
                ORDER BY j.recovered DESC,
                         CASE j.job_class WHEN 'interactive' THEN 0 WHEN 'bulk' THEN 1 ELSE 2 END,
                         j.created_at
                LIMIT 1
            ) h
            LEFT JOIN running r ON r.namespace = w.namespace
            LEFT JOIN ragsage_namespace_settings s ON s.namespace = w.namespace
            WHERE w.namespace IS NOT NULL
        )
        SELECT heads.namespace, heads.id FROM heads
        ORDER BY heads.recovered DESC,
                 (heads.slots > 0 AND heads.running >= heads.slots),
                 heads.running,
                 heads.last_turn NULLS FIRST,
                 heads.created_at
        LIMIT 1
    $$;

ALTER FUNCTION ragsage_next_job(integer, uuid[]) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_next_job(integer, uuid[]) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_next_job(integer, uuid[]) TO "{{app_role}}";
