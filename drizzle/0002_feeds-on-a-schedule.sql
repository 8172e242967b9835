ALTER TABLE `feeds` ADD `url` text;--> statement-breakpoint
ALTER TABLE `feeds` ADD `file_path` text;--> statement-breakpoint
ALTER TABLE `feeds` ADD `schedule` text;--> statement-breakpoint
ALTER TABLE `feeds` ADD `etag` text;--> statement-breakpoint
ALTER TABLE `feeds` ADD `last_modified` text;--> statement-breakpoint
ALTER TABLE `feeds` ADD `last_refresh_at` integer;--> statement-breakpoint
ALTER TABLE `feeds` ADD `last_error` text;--> statement-breakpoint
ALTER TABLE `feeds` ADD `bad_lines` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `feeds` ADD `created_at` integer DEFAULT 0 NOT NULL;