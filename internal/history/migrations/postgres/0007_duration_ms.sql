-- How long an answered call talked (milliseconds; NULL: it did not), so that
-- the dashboard's overview sums talk time in the store instead of reading
-- every call. Calls archived before this migration get it from their
-- object.
ALTER TABLE calls ADD COLUMN duration_ms BIGINT;

UPDATE calls
SET duration_ms = (object->'status'->>'durationMS')::bigint
WHERE object->'status'->>'durationMS' IS NOT NULL;
