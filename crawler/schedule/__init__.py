"""Regular grabs: when each rule's index pages are due (claimed once per period in Redis, one active
scheduler), and adaptive revisits that move a site's period with the news it gives."""
