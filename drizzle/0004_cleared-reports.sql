CREATE TABLE `cleared_report_times` (
	`reporter_id` integer NOT NULL,
	`ip` text NOT NULL,
	`reported_at` integer NOT NULL,
	PRIMARY KEY(`reporter_id`, `ip`),
	FOREIGN KEY (`reporter_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `credit_ledger_report_id` ON `credit_ledger` (`report_id`);