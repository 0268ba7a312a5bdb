-- requires: 2

CREATE OR REPLACE FUNCTION ragsage_namespaces()
    RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT DISTINCT d.namespace FROM ragsage_documents d ORDER BY 1
    $$;

ALTER FUNCTION ragsage_namespaces() OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_namespaces() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_namespaces() TO "{{app_role}}";
