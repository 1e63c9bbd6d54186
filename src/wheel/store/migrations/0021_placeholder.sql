-- local placeholder (never committed): another branch's migration
SELECT 1;
