package jobs
