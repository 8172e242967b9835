-- Every write to addresses is logged so a running server can follow changes made by other processes.
CREATE TRIGGER `addresses_log_insert` AFTER INSERT ON `addresses` BEGIN
  INSERT INTO `address_change_log` (`ip`) VALUES (NEW.`ip`);
END;
--> statement-breakpoint
CREATE TRIGGER `addresses_log_update` AFTER UPDATE ON `addresses` BEGIN
  INSERT INTO `address_change_log` (`ip`) VALUES (NEW.`ip`);
END;
--> statement-breakpoint
CREATE TRIGGER `addresses_log_delete` AFTER DELETE ON `addresses` BEGIN
  INSERT INTO `address_change_log` (`ip`) VALUES (OLD.`ip`);
END;
