-- local placeholder for another branch's migration (never committed)
SELECT 1;
