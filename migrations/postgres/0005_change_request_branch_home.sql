-- Where a change request's branch lives: NULL in the repository itself, else the bot's fork
-- (`forge.push_to = "fork"`), by its path and clone URL. Every later push of the change request
-- (a revision, a CI repair, a replay onto a moved base) goes to the place recorded here.
ALTER TABLE change_requests ADD COLUMN head_repo TEXT;
ALTER TABLE change_requests ADD COLUMN head_clone_url TEXT;
