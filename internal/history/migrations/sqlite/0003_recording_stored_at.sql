-- When a call's recording was stored (integer nanoseconds since the epoch;
-- NULL: the call has no recording, or it has been deleted), so that
-- recording retention finds the recordings due for deletion without reading
-- every call. Calls archived before this migration get it from their
-- object.
ALTER TABLE calls ADD COLUMN recording_stored_at INTEGER;

UPDATE calls
SET recording_stored_at = CAST(strftime('%s', json_extract(object, '$.status.recording.storedAt')) AS INTEGER) * 1000000000
WHERE json_extract(object, '$.status.recording.storedAt') IS NOT NULL;

-- Most calls' recordings are gone or never were; only the others are indexed.
CREATE INDEX calls_by_recording_stored ON calls (recording_stored_at) WHERE recording_stored_at IS NOT NULL;
