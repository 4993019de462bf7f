/* syrk without alpha and beta: C += A * A^T, lower triangle (fp64) */
void syrk_acc(int n, int m, double C[n][n], double A[n][m]) {
  for (int i = 0; i < n; i++)
    for (int k = 0; k < m; k++)
      for (int j = 0; j <= i; j++)
        C[i][j] += A[i][k] * A[j][k];
}
