/* syrk as people write it: C = alpha*A*A^T + beta*C, lower triangle, a scalar accumulator (issue 16's fp64 target) */
void syrk_scalar(int n, int m, double alpha, double beta, double C[n][n], double A[n][m]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j <= i; j++) {
      double acc = 0.0;
      for (int k = 0; k < m; k++)
        acc += A[i][k] * A[j][k];
      C[i][j] = alpha * acc + beta * C[i][j];
    }
}
