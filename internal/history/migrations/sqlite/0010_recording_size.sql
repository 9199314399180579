-- The size of a call's stored recording (bytes; NULL: none, or deleted), so
-- that an organization's recording storage is summed in the store, through
-- calls_recordings_by_namespace, against its quota. Calls archived before
-- this migration get it from their object.
ALTER TABLE calls ADD COLUMN recording_size_bytes INTEGER;

UPDATE calls
SET recording_size_bytes = json_extract(object, '$.status.recording.sizeBytes')
WHERE recording_stored_at IS NOT NULL;

CREATE INDEX calls_recordings_by_namespace ON calls (namespace) WHERE recording_stored_at IS NOT NULL;
