CREATE TABLE `bouncers` (
	`name` text PRIMARY KEY NOT NULL,
	`api_key_id` integer NOT NULL,
	`minimum_risk` text NOT NULL,
	`categories` text,
	`mode` text NOT NULL,
	`duration_seconds` integer NOT NULL,
	`created_at` integer NOT NULL,
	`last_metrics_at` integer,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `bouncers_api_key_id_unique` ON `bouncers` (`api_key_id`);--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_decision_cursors` (
	`api_key_id` integer NOT NULL,
	`client_address` text NOT NULL,
	`last_pull_at` integer NOT NULL,
	`ids` blob NOT NULL,
	`sent_at` blob NOT NULL,
	`v6_values` text NOT NULL,
	PRIMARY KEY(`api_key_id`, `client_address`),
	FOREIGN KEY (`api_key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
-- decision_cursors held nothing before this migration (no route wrote it): the new shape starts empty.
DROP TABLE `decision_cursors`;--> statement-breakpoint
ALTER TABLE `__new_decision_cursors` RENAME TO `decision_cursors`;--> statement-breakpoint
PRAGMA foreign_keys=ON;