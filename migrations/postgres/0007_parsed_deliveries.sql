-- What each delivery asks of the bot, as the server read it on arrival (a JSON `BotEvent`): jobs
-- work from it and never parse a payload again. Rows recorded before this column existed are
-- NULL until `autofix serve` reads their payloads once at start-up.
ALTER TABLE deliveries ADD COLUMN parsed TEXT;
