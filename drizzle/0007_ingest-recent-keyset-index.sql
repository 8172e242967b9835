DROP INDEX `addresses_last_seen`;--> statement-breakpoint
CREATE INDEX `addresses_last_seen_ip` ON `addresses` ("last_seen" DESC,`ip`);