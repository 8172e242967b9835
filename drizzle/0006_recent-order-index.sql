DROP INDEX `addresses_last_seen`;--> statement-breakpoint
CREATE INDEX `addresses_recent` ON `addresses` ("last_seen" DESC,`ip`);