-- What an audit entry records beyond its target, as JSON: the settings a
-- settings.put changed (each key with its old and new value), that an edit
-- was a dry run. NULL when there is nothing more to say.
ALTER TABLE audit ADD COLUMN detail TEXT;
