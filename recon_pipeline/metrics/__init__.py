"""Operational metrics of the two queues (payment events, the posting outbox): what is read from the
database at scrape time (``queues``), what each process counts (``instruments``), and how both are
exposed with prometheus-client (``exposition``)."""
