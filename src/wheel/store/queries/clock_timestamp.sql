SELECT extract(epoch FROM clock_timestamp())::float8
