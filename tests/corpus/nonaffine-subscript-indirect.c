// expect: 5:5 pointer parameter 'B'
// options: --size N=8
void f(int N, int P[N], double A[N], double *B) {
  for (int i = 0; i < N; i++)
    B[P[i]] = A[i];
}
