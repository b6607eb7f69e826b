<?php
// SPDX-License-Identifier: MIT
// The lab's service: one request holds one php-fpm worker for an
// exponentially distributed time (mean LAB_SERVICE_TIME seconds) times the
// slowdown factor read from LAB_FACTOR_FILE on every request.  Writing 10
// into that file is the trigger; writing 1 removes it.  The worker keeps
// sleeping when the client has already given up: that wasted work is what
// sustains a retry storm.
$mean = (float)($_SERVER['LAB_SERVICE_TIME'] ?? 0.05);
$factor = 1.0;
$raw = @file_get_contents($_SERVER['LAB_FACTOR_FILE'] ?? '');
if ($raw !== false && is_numeric(trim($raw))) {
    $factor = max(0.0, (float)trim($raw));
}
// Inverse transform sampling; u in (0, 1] so log(u) is finite.
$u = mt_rand(1, mt_getrandmax()) / mt_getrandmax();
usleep((int)round(-log($u) * $mean * $factor * 1e6));
header('Content-Type: text/plain');
echo "ok\n";
