CREATE TABLE `forwarded_reports` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` integer NOT NULL,
	`result` text NOT NULL,
	`created_at` integer NOT NULL
);
