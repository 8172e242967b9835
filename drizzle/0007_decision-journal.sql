CREATE TABLE `decision_changes` (
	`filter_key` text NOT NULL,
	`seq` integer NOT NULL,
	`id` integer NOT NULL,
	`entered` integer NOT NULL,
	`at` integer NOT NULL,
	`v6_value` text,
	PRIMARY KEY(`filter_key`, `seq`, `id`)
);
--> statement-breakpoint
CREATE INDEX `decision_changes_left_at` ON `decision_changes` (`filter_key`,`entered`,`at`);--> statement-breakpoint
CREATE TABLE `decision_journals` (
	`filter_key` text PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL,
	`checkpoint_seq` integer NOT NULL,
	`pruned_seq` integer NOT NULL,
	`ids` blob NOT NULL,
	`entered` blob NOT NULL,
	`v6_values` text NOT NULL
);
--> statement-breakpoint
ALTER TABLE `decision_cursors` ADD `filter_key` text;--> statement-breakpoint
ALTER TABLE `decision_cursors` ADD `seq` integer;--> statement-breakpoint
ALTER TABLE `decision_cursors` ADD `refresh_queue` text;