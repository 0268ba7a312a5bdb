-- requires: 25

-- Fills the keyword column for a writer that did not (migration 25): an
-- insert without it, or a change of the text or headings that left it as it
-- was.  The engine's own writer always sends it, so the trigger's condition
-- is false for its rows and the function never runs for them.
CREATE OR REPLACE FUNCTION ragsage_fill_chunk_lexical() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        NEW.lexical := ragsage_chunk_lexical(
            NEW.headings, ragsage_name_words(NEW.headings),
            NEW.text, ragsage_name_words(NEW.text));
        RETURN NEW;
    END
    $$;

REVOKE ALL ON FUNCTION ragsage_fill_chunk_lexical() FROM PUBLIC;

CREATE OR REPLACE TRIGGER ragsage_chunks_lexical_on_insert
    BEFORE INSERT ON ragsage_chunks FOR EACH ROW
    WHEN (NEW.lexical IS NULL)
    EXECUTE FUNCTION ragsage_fill_chunk_lexical();

CREATE OR REPLACE TRIGGER ragsage_chunks_lexical_on_update
    BEFORE UPDATE OF text, headings, lexical ON ragsage_chunks FOR EACH ROW
    WHEN ((NEW.text IS DISTINCT FROM OLD.text OR NEW.headings IS DISTINCT FROM OLD.headings)
          AND NEW.lexical IS NOT DISTINCT FROM OLD.lexical
          OR NEW.lexical IS NULL)
    EXECUTE FUNCTION ragsage_fill_chunk_lexical();
