/* floyd-warshall.c: PolyBench/C 4.2 medley/floyd-warshall, the kernel function as the suite
 * writes it, behind a copy of its header's macros (one dataset chosen with
 * MINI_DATASET, SMALL_DATASET or MEDIUM_DATASET; SMALL when none is). */
#if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET)
# define SMALL_DATASET
#endif

#if !defined(N)
# ifdef MINI_DATASET
#  define N 60
# endif
# ifdef SMALL_DATASET
#  define N 180
# endif
# ifdef MEDIUM_DATASET
#  define N 500
# endif
#endif

#define _PB_N POLYBENCH_LOOP_BOUND(N,n)

#define DATA_TYPE int
#define DATA_PRINTF_MODIFIER "%d "

/* polybench.h's defaults: scalar loop bounds, constant-size arrays */
#define POLYBENCH_LOOP_BOUND(x,y) y
#define POLYBENCH_1D(var,dim1,ddim1) var[dim1]
#define POLYBENCH_2D(var,dim1,dim2,ddim1,ddim2) var[dim1][dim2]
#define POLYBENCH_3D(var,dim1,dim2,dim3,ddim1,ddim2,ddim3) var[dim1][dim2][dim3]

static
void kernel_floyd_warshall(int n,
                           DATA_TYPE POLYBENCH_2D(path,N,N,n,n))
{
  int i, j, k;

#pragma scop
  for (k = 0; k < _PB_N; k++)
    {
      for(i = 0; i < _PB_N; i++)
        for (j = 0; j < _PB_N; j++)
          path[i][j] = path[i][j] < path[i][k] + path[k][j] ?
            path[i][j] : path[i][k] + path[k][j];
    }
#pragma endscop

}
