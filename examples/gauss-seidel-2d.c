/* 2d Gauss-Seidel with row-wise alternating even/odd updates (seed 001 §5,
   Example 2): row i first updates its odd columns, then its even ones, in place.
   Counting half-rows as time steps (t = 2i + parity), a localisation window of 2
   covers both updates of a row. */
void gauss_seidel_2d(int m, int n, double A[n + 1][n + 1])
{
  for (int k = 1; k <= m; k++)
    for (int i = 1; i <= n - 1; i++) {
      for (int j = 1; j <= n - 1; j += 2)
        A[i][j] = (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]) * 0.25;
      for (int j = 2; j <= n - 1; j += 2)
        A[i][j] = (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]) * 0.25;
    }
}
